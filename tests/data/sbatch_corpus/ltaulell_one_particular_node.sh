#!/bin/bash
# source: github ltaulell/submission_scripts Slurm/one_particular_node.sh (PSMN, ENS de Lyon)
# adapted: -A added; partition E5 -> cpu; 16 CPUs scaled to 4; nodelist c8220node[41-56,169-176] -> c1
#SBATCH -A @ACCOUNT@
#SBATCH --job-name=test
#SBATCH --partition=cpu
#SBATCH --cpus-per-task=4           # -n
#SBATCH --ntasks=1
#SBATCH --time=0-00:10:00           # day-hours:minutes:seconds
#SBATCH --nodes=1                   # -N (exclusive way)
#SBATCH --exclusive                 # exclusive mode
#SBATCH --nodelist=c1               # a particular set of nodes

env > env-E5.txt
ls /scratch/ssd/
