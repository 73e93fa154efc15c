#!/bin/bash
# source: github safety-research/talkative-probes consistency-lens/scripts/archive/slurm.sh
# adapted: -A and -p gpu added; 8 tasks and 8 GPUs scaled to 4, 8 CPUs per task to 1; nodelist 330702be7061 -> g1; --constraint=h100 removed
#SBATCH -A @ACCOUNT@
#SBATCH -p gpu
#SBATCH --job-name=lens
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=4
#SBATCH --gres=gpu:4
#SBATCH --cpus-per-task=1
#SBATCH --nodelist=g1

deepspeed --num_gpus 8 01_train.py --deepspeed_config ../config/ds_stage2.yaml --config ../config/lens.yaml
