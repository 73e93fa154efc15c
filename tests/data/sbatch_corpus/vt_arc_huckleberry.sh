#! /bin/bash
# source: https://arc.vt.edu/userguide/slurm/
# adapted: partition normal_q -> cpu, -A added
#SBATCH -J slurm_huckleberry
#SBATCH -p cpu
#SBATCH -n 1
#SBATCH -t 00:05:00
#SBATCH --mem=100M
#SBATCH -A @ACCOUNT@
cd $SLURM_SUBMIT_DIR
echo hello
