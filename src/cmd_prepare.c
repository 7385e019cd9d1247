/* cmd_prepare.c: placeholder until this command lands. */
#include <stdio.h>
#include "commands.h"
int cmd_prepare(int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "nmt prepare: not implemented yet\n"); return 1; }
