# scripts/lib.sh: what the scripts that drive nmt share. Source it:
#   . "$(dirname "$0")/lib.sh"
#
#   config_string "$resolved" KEY   the string value of KEY (its last path
#                                   part, e.g. test_src) in the resolved
#                                   config that `nmt config` prints
#   config_number "$resolved" KEY   the same for a number (e.g. beam)
#   read_text FILE                  FILE on stdout, gunzipped when gzip
#                                   (by content, as nmt's corpus reader)
#   ... | bleu_score                the BLEU score (e.g. 41.8) of the
#                                   `nmt eval --bleu` output on stdin

config_string() {
  printf '%s\n' "$1" | sed -n "s/^[[:space:]]*\"$2\":[[:space:]]*\"\(.*\)\",\{0,1\}[[:space:]]*$/\1/p" | head -1
}

config_number() {
  printf '%s\n' "$1" | sed -n "s/^[[:space:]]*\"$2\":[[:space:]]*\([0-9.eE+-]*\),\{0,1\}[[:space:]]*$/\1/p" | head -1
}

read_text() { zcat -f -- "$1"; }

bleu_score() { sed -n 's/^[[:space:]]*BLEU|[^=]* = \([0-9.]*\) .*/\1/p' | head -1; }
