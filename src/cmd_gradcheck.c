/* cmd_gradcheck.c: placeholder until this command lands. */
#include <stdio.h>
#include "commands.h"
int cmd_gradcheck(int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "nmt gradcheck: not implemented yet\n"); return 1; }
