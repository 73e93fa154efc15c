#!/bin/bash
# source: github CSCfi/pytorch-ddp-examples run-gpu4-deepspeed-mahti.sh
# adapted: account, partition gputest -> gpu; 40 CPUs scaled to 4; GPU type a100 -> fake
#SBATCH --account=@ACCOUNT@
#SBATCH --partition=gpu
#SBATCH --nodes=1
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=4
#SBATCH --mem=0
#SBATCH --time=15
#SBATCH --gres=gpu:fake:4

srun singularity_wrapper exec deepspeed $*
