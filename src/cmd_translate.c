/* cmd_translate.c: placeholder until this command lands. */
#include <stdio.h>
#include "commands.h"
int cmd_translate(int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "nmt translate: not implemented yet\n"); return 1; }
