#!/usr/bin/env bash
# Writes shared/text/data/english-words.txt: the lower-case words of three letters or more
# of Debian's wamerican list (SCOWL, by Kevin Atkinson; licence in shared/text/data/README.md),
# one a line, sorted. The spelling correction leaves these as written: a real word that the
# model's tokenizer splits ("vegan", "abort", "taxed") is not a misspelling.
#   infra/scripts/english-words.sh   (installs wamerican with apt-get when it is missing)
set -euo pipefail
cd "$(dirname "$0")/../.."
list=/usr/share/dict/american-english
if [ ! -f "$list" ]; then
  apt-get install -y -qq wamerican >/dev/null
fi
LC_ALL=C grep -E '^[a-z]{3,}$' "$list" | LC_ALL=C sort -u > shared/text/data/english-words.txt
echo "english-words: $(wc -l < shared/text/data/english-words.txt) words in shared/text/data/english-words.txt (from $(dpkg-query -W -f='wamerican ${Version}' wamerican))"
