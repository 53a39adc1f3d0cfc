/* `ckey serve`: the review page, plain HTML/JS/CSS from page/, embedded into the binary at build time (the
 * assembler's .incbin, as the built-in model is: src/model/builtin.c), so that ckey carries its page and
 * nothing is fetched from elsewhere. CK_SERVE_PAGE_DIR is the folder's absolute path, from CMake. */
#include "serve.h"

#include <string.h>

#ifndef CK_SERVE_PAGE_DIR
#error "CK_SERVE_PAGE_DIR (tools/ckey/serve/page) must be defined by the build"
#endif

#define SV_EMBED(sym, file)                                                                                        \
    __asm__(".section .rodata\n.global " #sym "_begin\n" #sym "_begin:\n.incbin \"" CK_SERVE_PAGE_DIR "/" file       \
            "\"\n.global " #sym "_end\n" #sym "_end:\n.previous\n");                                                \
    extern const unsigned char sym##_begin[], sym##_end[];

SV_EMBED(ck__page_html, "index.html")
SV_EMBED(ck__page_js, "app.js")
SV_EMBED(ck__page_css, "app.css")

const unsigned char *sv_page_file(const char *path, size_t *len, const char **type) {
    static const struct {
        const char          *path, *type;
        const unsigned char *begin, *end;
    } files[] = {
        {"/", "text/html; charset=utf-8", ck__page_html_begin, ck__page_html_end},
        {"/index.html", "text/html; charset=utf-8", ck__page_html_begin, ck__page_html_end},
        {"/app.js", "text/javascript; charset=utf-8", ck__page_js_begin, ck__page_js_end},
        {"/app.css", "text/css; charset=utf-8", ck__page_css_begin, ck__page_css_end},
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        if (!strcmp(path, files[i].path)) {
            *len  = (size_t)(files[i].end - files[i].begin);
            *type = files[i].type;
            return files[i].begin;
        }
    return NULL;
}
