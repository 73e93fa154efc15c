#!/bin/bash -l
# source: github PrincetonUniversity/multi_gpu_training 04_model_parallel_with_fsdp/chess_finetune.sh
# adapted: -A and -p gpu added; 256G scaled to 3G; --constraint=gpu80 removed (no such feature here)
#SBATCH -A @ACCOUNT@
#SBATCH -p gpu
#SBATCH --job-name=chess_finetune  # create a short name for your job
#SBATCH --output=%x-%j_%n.out      # file to write stdout
#SBATCH --nodes=1                  # node count
#SBATCH --ntasks=1                 # total number of tasks across all nodes
#SBATCH --cpus-per-task=4          # cpu-cores per task (>1 if multi-threaded tasks)
#SBATCH --mem=3G                   # cpu memory per node
#SBATCH --gres=gpu:4               # number of gpus per node
#SBATCH --time=01:00:00            # total run time limit (HH:MM:SS)

total_batch_size=${TOTAL_BATCH_SIZE:-64}
num_gpus=$(jq -n "[$CUDA_VISIBLE_DEVICES] | length")
torchrun --nnodes=${SLURM_NNODES} --nproc-per-node=$num_gpus chess_finetune.py $@
