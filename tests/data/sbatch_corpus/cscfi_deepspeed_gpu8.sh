#!/bin/bash
# source: github CSCfi/pytorch-ddp-examples run-deepspeed-gpu8.sh
# adapted: account, partition gputest -> gpu; 10 CPUs per task scaled to 1; GPU type v100 -> fake
#SBATCH --account=@ACCOUNT@
#SBATCH --partition=gpu
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=4
#SBATCH --cpus-per-task=1
#SBATCH --mem=0
#SBATCH --time=15
#SBATCH --gres=gpu:fake:4

module purge
module load pytorch

srun python3 mnist_deepspeed.py --epochs=100 \
     --deepspeed --deepspeed_config ds_config.json
