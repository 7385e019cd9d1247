/* cmd_train.c: placeholder until this command lands. */
#include <stdio.h>
#include "commands.h"
int cmd_train(int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "nmt train: not implemented yet\n"); return 1; }
