#!/bin/bash
# source: github daankaasjager/thesis_final_coding sleeper.sh (RUG Habrok)
# adapted: -A added; 10GB per CPU scaled to 1GB
#SBATCH -A @ACCOUNT@
#SBATCH --time=5:30:00
#SBATCH --partition=gpu
#SBATCH --nodes=1
#SBATCH --gpus-per-node=1
#SBATCH --cpus-per-task=1
#SBATCH --mem-per-cpu=1GB

sleep 18000
