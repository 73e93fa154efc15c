#!/bin/bash
# source: github brown-ccv/slurm job_arrays/job-array-nonsequential.sh
# adapted: -A added; partition batch -> cpu; 4G per CPU scaled to 1G

#SBATCH -A @ACCOUNT@

# Resource request
#SBATCH --time=00:05:00
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=1
#SBATCH --cpus-per-task=1
#SBATCH --mem-per-cpu=1G

# Partition
#SBATCH --partition=cpu

# Define array (TASK IDs)
#SBATCH --array=1,6-7,12

# Job handling
#SBATCH -J arrayjob-nonsquential
#SBATCH -o %x-%A_%a.out

echo "Running job array number: "$SLURM_ARRAY_TASK_ID
