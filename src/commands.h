/* commands.h: the subcommands of the nmt binary. Each takes the arguments
 * after its name (argv[0] is the subcommand name), handles its own --help,
 * prints its errors on stderr prefixed "nmt CMD: ", and returns the exit code
 * (0 ok, 1 runtime failure, 2 usage or config error). */
#ifndef NMT_COMMANDS_H
#define NMT_COMMANDS_H

int cmd_train(int argc, char **argv);       /* src/cmd_train.c */
int cmd_translate(int argc, char **argv);   /* src/cmd_translate.c */
int cmd_score(int argc, char **argv);       /* src/cmd_score.c */
int cmd_eval(int argc, char **argv);        /* src/cmd_eval.c */
int cmd_prepare(int argc, char **argv);     /* src/cmd_prepare.c */
int cmd_gradcheck(int argc, char **argv);   /* src/cmd_gradcheck.c */
int cmd_demo_corpus(int argc, char **argv); /* src/cmd_demo_corpus.c */
int cmd_config(int argc, char **argv);      /* src/cmd_config.c */
int cmd_plot(int argc, char **argv);        /* src/cmd_plot.c */
int cmd_shortlist(int argc, char **argv);   /* src/cmd_shortlist.c */
int cmd_average(int argc, char **argv);     /* src/cmd_average.c */
int cmd_info(int argc, char **argv);        /* src/cmd_info.c */

#endif
