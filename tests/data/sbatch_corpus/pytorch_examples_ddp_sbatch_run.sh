#!/bin/bash
# source: github mashooo/pytorch_examples distributed/ddp-tutorial-series/slurm/sbatch_run.sh
# adapted: -A and -p gpu added; --chdir points at a directory of this test run
#SBATCH --job-name=multinode-example
#SBATCH --nodes=2
#SBATCH --ntasks=2
#SBATCH --gpus-per-task=1
#SBATCH --exclusive
#SBATCH --chdir=@SUBDIR@
#SBATCH -A @ACCOUNT@
#SBATCH -p gpu

srun -l --ntasks-per-node=1 slurm/torchrun.sh
