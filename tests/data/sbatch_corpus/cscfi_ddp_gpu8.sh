#!/bin/bash
# source: github CSCfi/pytorch-ddp-examples run-ddp-gpu8.sh
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

export RDZV_HOST=$(hostname)
export RDZV_PORT=29400

srun torchrun \
    --nnodes=$SLURM_JOB_NUM_NODES \
    --nproc_per_node=4 \
    --rdzv_id=$SLURM_JOB_ID \
    --rdzv_backend=c10d \
    --rdzv_endpoint="$RDZV_HOST:$RDZV_PORT" \
    mnist_ddp.py --epochs=100
