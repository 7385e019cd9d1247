/* cmd_demo_corpus.c: placeholder until the demo corpus generator lands. */
#include <stdio.h>
#include "commands.h"
int cmd_demo_corpus(int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "nmt demo-corpus: not implemented yet\n"); return 1; }
