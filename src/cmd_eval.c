/* cmd_eval.c: placeholder until the BLEU work lands. */
#include <stdio.h>
#include "commands.h"
int cmd_eval(int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "nmt eval: not implemented yet\n"); return 1; }
