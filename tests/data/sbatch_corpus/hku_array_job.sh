#!/bin/bash
# source: https://hpc.hku.hk/guide/slurm-guide/slurm-job-array/
# adapted: partition intel -> cpu, -A added; --mem 6G scaled to 1G
#SBATCH --job-name=array_job
#SBATCH --output=array_job_%A_%a.out
#SBATCH --error=array_job_%A_%a.err
#SBATCH --array=1-22
#SBATCH --time=01:00:00
#SBATCH --partition=cpu
#SBATCH --ntasks=1
#SBATCH --mem=1G
#SBATCH -A @ACCOUNT@
ml gatk
gatk HaplotypeCaller -I sample1.bam -L $SLURM_ARRAY_TASK_ID
