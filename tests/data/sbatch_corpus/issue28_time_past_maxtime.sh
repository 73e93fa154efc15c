#!/bin/bash
# source: issue 28 item 3: a time limit past the partition's MaxTime (sbatch accepts it; it pends forever, PartitionTimeLimit)
# adapted: -A added
# gw-expect: refused --time
#SBATCH -A @ACCOUNT@
#SBATCH -p cpu
#SBATCH --time=3-00:00:00
echo "never runs"
