#!/bin/bash
# source: github CSCfi/pytorch-ddp-examples run-accelerate-gpu8.sh
# adapted: account, partition gputest -> gpu; 40 CPUs scaled to 4; GPU type v100 -> fake
#SBATCH --account=@ACCOUNT@
#SBATCH --partition=gpu
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --cpus-per-task=4
#SBATCH --mem=0
#SBATCH --time=15
#SBATCH --gres=gpu:fake:4

module purge
module load pytorch

MASTER_IP=$(ip -4 -brief addr show | grep -E 'hsn0|ib0' | grep -oP '([\d]+.[\d.]+)')
MASTER_PORT=29400

srun accelerate.sh --multi_gpu --num_processes=8 --num_machines=2 \
     --mixed_precision=no --dynamo_backend=no \
     --main_process_ip=$MASTER_IP --main_process_port=$MASTER_PORT \
     mnist_accelerate.py --epochs=100
