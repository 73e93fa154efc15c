#!/bin/bash -l
# source: github ubccr/ccr-examples slurm/0_Introductory/ub-hpc/debug.sh
# adapted: -A added; cluster ub-hpc -> gwlocal, partition debug -> cpu, qos debug -> normal; 12 CPUs scaled to 4, 64G to 3G

#SBATCH -A @ACCOUNT@
#SBATCH --clusters=gwlocal
#SBATCH --partition=cpu
#SBATCH --qos=normal
#SBATCH --time=01:00:00
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=4
#SBATCH --mem=3G

hostname
