#!/bin/bash
# source: github jajupmochi/graphkit-learn notebooks/else/job_test.sl
# adapted: -A added; partition long -> cpu
#
#SBATCH --job-name=test
#SBATCH --output=res.txt
#SBATCH --partition=cpu
#SBATCH -A @ACCOUNT@
#
#SBATCH --ntasks=1
#SBATCH --time=10:00
#SBATCH --mem-per-cpu=100

srun hostname
srun sleep 60
