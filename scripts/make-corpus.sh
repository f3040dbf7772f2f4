#!/usr/bin/env bash
# Regenerate the quality probe's vendored text from Debian's bible-kjv packages
# (King James Version, 1611: the text's copyright has expired; see the packages'
# copyright file). The probe records the file's name, size and sha256 in every report.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v bible >/dev/null || apt-get install -y -qq bible-kjv
bible -l0 "Ruth1:1-4:22" "Jonah1:1-4:11" > ecocompute/data/corpus/kjv-ruth-jonah.txt
sha256sum ecocompute/data/corpus/kjv-ruth-jonah.txt
