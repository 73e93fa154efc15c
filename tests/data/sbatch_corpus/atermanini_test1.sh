#!/bin/bash
# source: github atermanini/testing slurm/test1.sh
# adapted: -A added; --mem-per-cpu 5G scaled to 1G (nodes here have 4000 MB)
#SBATCH --job-name=example_job
#SBATCH --out="slurm-%j.out"
#SBATCH --time=01:00
#SBATCH --nodes=1 --ntasks=1 --cpus-per-task=2
#SBATCH --mem-per-cpu=1G
#SBATCH --mail-type=ALL
#SBATCH -A @ACCOUNT@

echo "Starting at $(date)"
