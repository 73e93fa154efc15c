#!/bin/bash
# source: github JustinSQiu/TinyZero-Efficient test_script.sh (the example of Slurm's quickstart guide)
# adapted: -A added
#
#SBATCH --job-name=test
#SBATCH --output=res.txt
#SBATCH -A @ACCOUNT@
#
#SBATCH --ntasks=1
#SBATCH --time=60:00
#SBATCH --mem-per-cpu=200

srun hostname
srun sleep 60
