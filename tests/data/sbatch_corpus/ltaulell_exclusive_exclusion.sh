#!/bin/bash
# source: github ltaulell/submission_scripts Slurm/exclusive+exclusion.sh (PSMN, ENS de Lyon)
# adapted: -A added; partition Lake-short -> cpu; 16 CPUs scaled to 4; excluded node c82gluster1 -> c2
#SBATCH -A @ACCOUNT@
#SBATCH --job-name=test
#SBATCH --partition=cpu
#SBATCH --cpus-per-task=4           # -n
#SBATCH --ntasks=1
#SBATCH --time=0-00:10:00           # day-hours:minutes:seconds
#SBATCH --nodes=1                   # -N (exclusive way)
#SBATCH --exclusive                 # exclusive mode
#SBATCH --exclude=c2                # nobody like gluster1, he compute backward

env > env-Lake-short.txt
