/* The image files inside the library: the public calls (ckey_io.h) and what the codecs share (image_buf.h:
 * the pixel limits, decode buffers, writer jobs). Formats, values and errors: ckey_io.h. */
#ifndef CK_IMAGE_H
#define CK_IMAGE_H

#include "ckey_io.h"
#include "core/check.h"
#include "io/image_buf.h" /* limits, EXR compression, the codecs' shared buffers */

#endif
