#!/bin/bash
# source: github LabShengLi/nanome src/nanocompare/methcall/jobarray-test.sh
# adapted: -A added; partition compute -> cpu (its log/ directory made before submitting, as its user would)
#SBATCH -A @ACCOUNT@
#SBATCH --job-name=ArrayJob             # job name (shows up in the queue)
#SBATCH --partition=cpu
#SBATCH --time=00:01:00                 # Walltime (HH:MM:SS)
#SBATCH --mem=512MB                     # Memory
#SBATCH --array=1-2                     # Array jobs
#SBATCH --time=00:01:00     	# Walltime (HH:MM:SS)
#SBATCH --output=log/run_%a-slurm_output.out
#SBATCH --error=log/run_%a-slurm_error.err

pwd
echo "This is result ${SLURM_ARRAY_TASK_ID}"
