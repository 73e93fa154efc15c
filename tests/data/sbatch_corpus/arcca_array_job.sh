#!/bin/bash
# source: github HarborneD/ARCCA_Python_Tool test_arcca_scripts/test_array_job.sh
# adapted: -A added; 80 tasks at 40 per node scaled to 8 at 4 (-n 1 is overridden by the later --ntasks, as in the original)

#SBATCH -A @ACCOUNT@
#SBATCH -J arraytest
#SBATCH --array=0-4
#SBATCH -o output-%A_%a-%J.o
#SBATCH -n 1
#SBATCH --ntasks=8
#SBATCH --ntasks-per-node=4

echo SLURM_JOB_ID $SLURM_JOB_ID
echo SLURM_ARRAY_TASK_ID $SLURM_ARRAY_TASK_ID
