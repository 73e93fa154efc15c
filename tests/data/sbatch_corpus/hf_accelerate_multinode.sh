#!/bin/bash
# source: github huggingface/accelerate examples/slurm/submit_multinode.sh
# adapted: -A and -p gpu added; 4 nodes scaled to 2, 160 CPUs per task to 4

#SBATCH -A @ACCOUNT@
#SBATCH -p gpu
#SBATCH --job-name=multinode
#SBATCH -D .
#SBATCH --output=O-%x.%j
#SBATCH --error=E-%x.%j
#SBATCH --nodes=2                   # number of nodes
#SBATCH --ntasks-per-node=1         # number of MP tasks
#SBATCH --gres=gpu:4                # number of GPUs per node
#SBATCH --cpus-per-task=4           # number of cores per tasks
#SBATCH --time=01:59:00             # maximum execution time (HH:MM:SS)

source activateEnviroment.sh
export GPUS_PER_NODE=4
head_node_ip=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n 1)

export LAUNCHER="accelerate launch \
    --num_processes $((SLURM_NNODES * GPUS_PER_NODE)) \
    --num_machines $SLURM_NNODES \
    --rdzv_backend c10d \
    --main_process_ip $head_node_ip \
    --main_process_port 29500 \
    "
export CMD="$LAUNCHER $PYTHON_FILE $ARGS"
srun $CMD
