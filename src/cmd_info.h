/* cmd_info.h: `nmt info`, which describes a checkpoint (src/cmd_info.c).
 * Declared here rather than in commands.h, the list of the other
 * subcommands, only because another change owned that file when this
 * command was added; fold it in there on the next edit of commands.h. */
#ifndef NMT_CMD_INFO_H
#define NMT_CMD_INFO_H

/* The arguments after "info" (argv[0] is "info"); returns the exit code:
 * 0, 1 for a missing or refused checkpoint, 2 for bad usage. */
int cmd_info(int argc, char **argv);

#endif
