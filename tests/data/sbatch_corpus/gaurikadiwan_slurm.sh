#!/bin/bash
# source: github gaurikadiwan/pytorch slurm.sh
# adapted: -A added; 16 CPUs scaled to 4. Its "--mem=32G" line is a command, not a directive: sbatch reads no
#   #SBATCH line after it (so no partition and no GPU), and neither may gw
#SBATCH -A @ACCOUNT@
#SBATCH --job-name=test
#SBATCH --nodes=1
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=4
#SBATCH
--mem=32G
#SBATCH --partition=gpu
#SBATCH --gres=gpu:1
