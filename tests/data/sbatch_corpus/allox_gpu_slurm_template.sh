#!/bin/sh
# source: github CalvinKrist/AlloxTesting estimator/gpu_slurm_template.sh
# adapted: -A added; partition main -> cpu; its <NAME> and <OUTPUT> placeholders filled as its generator would
#SBATCH -A @ACCOUNT@
#SBATCH --partition=cpu
#SBATCH --time=23:59:59
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=1
#SBATCH --job-name="allox estimate 3"
#SBATCH --output=estimate-3.out
#SBATCH --requeue
#SBATCH --exclusive

set -x
