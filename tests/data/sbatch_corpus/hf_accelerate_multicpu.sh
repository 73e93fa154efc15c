#!/bin/bash -l
# source: github huggingface/accelerate examples/slurm/submit_multicpu.sh
# adapted: -A added

#SBATCH -A @ACCOUNT@
#SBATCH --job-name=multicpu
#SBATCH --nodes=2                       # number of Nodes
#SBATCH --ntasks-per-node=1             # number of MP tasks
#SBATCH --exclusive
#SBATCH --output=O-%x.%j
#SBATCH --error=E-%x.%j

source activateEnvironment.sh
head_node_ip=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n 1)
export MASTER_PORT="${MASTER_PORT:-29555 }"
INSTANCES_PER_NODE="${INSTANCES_PER_NODE:-1}"
export CMD="accelerate launch --num_processes $((SLURM_NNODES * ${INSTANCES_PER_NODE})) --num_machines $SLURM_NNODES"
eval $CMD
