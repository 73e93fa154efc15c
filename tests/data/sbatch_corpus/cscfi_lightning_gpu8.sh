#!/bin/bash
# source: github CSCfi/pytorch-ddp-examples run-lightning-gpu8.sh
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
module load pytorch/1.12  # There were issues with earlier versions

export RDZV_HOST=$(hostname)
export RDZV_PORT=29400

srun python3 -m torch.distributed.run \
    --nnodes=$SLURM_JOB_NUM_NODES \
    --nproc_per_node=4 \
    --rdzv_id=$SLURM_JOB_ID \
    --rdzv_backend=c10d \
    --rdzv_endpoint="$RDZV_HOST:$RDZV_PORT" \
    mnist_lightning_ddp.py --gpus=4 --nodes=2 --epochs=100
