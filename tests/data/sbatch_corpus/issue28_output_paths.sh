#!/bin/bash
# source: issue 28 item 8: output paths as written, ./ and // kept (sbatch does not normalise them)
# adapted: -A added
#SBATCH -A @ACCOUNT@
#SBATCH -t 5
#SBATCH -o .//./log/out-%j.txt
#SBATCH -e log//./err-%j.txt
echo "hello"
