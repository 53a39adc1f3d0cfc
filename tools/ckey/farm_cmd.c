/* `ckey farm slurm|assemble`: dispatch to farm_slurm.c and farm_assemble.c. */
#include "farm.h"

#include <string.h>

int cmd_farm(int argc, char **argv) {
    if (argc >= 1 && !strcmp(argv[0], "slurm")) return farm_slurm(argc - 1, argv + 1);
    if (argc >= 1 && !strcmp(argv[0], "assemble")) return farm_assemble(argc - 1, argv + 1);
    if (argc >= 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h"))) {
        farm_usage(stdout);
        return 0;
    }
    farm_usage(stderr);
    return EXIT_USAGE;
}
