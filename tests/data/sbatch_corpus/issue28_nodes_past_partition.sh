#!/bin/bash
# source: issue 28 item 3: more nodes than the partition has (sbatch accepts it; it pends forever, PartitionNodeLimit)
# adapted: -A added
# gw-expect: refused -N
#SBATCH -A @ACCOUNT@
#SBATCH -p cpu
#SBATCH -N 3
#SBATCH -t 5
srun hostname
