#!/bin/bash
# source: github huggingface/accelerate examples/slurm/submit_multigpu.sh
# adapted: -A and -p gpu added; 160 CPUs per task scaled to 4

#SBATCH -A @ACCOUNT@
#SBATCH -p gpu
#SBATCH --job-name=multigpu
#SBATCH -D .
#SBATCH --output=O-%x.%j
#SBATCH --error=E-%x.%j
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=1         # number of MP tasks
#SBATCH --gres=gpu:4                # number of GPUs per node
#SBATCH --cpus-per-task=4           # number of cores per tasks
#SBATCH --time=01:59:00             # maximum execution time (HH:MM:SS)

source activateEnviroment.sh
export GPUS_PER_NODE=4
export SCRIPT=/accelerate/examples/complete_nlp_example.py
accelerate launch --num_processes $GPUS_PER_NODE $SCRIPT $SCRIPT_ARGS
