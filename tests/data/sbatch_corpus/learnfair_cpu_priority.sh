#!/bin/zsh
# source: github jasonleeinf/dotfiles run/run_learnfair_cpu_priority.sh (FAIR cluster)
# adapted: -A added; partition priority -> cpu; output /home/yl1363/slurm -> this test's directory; its last directive,
#   "#SBATCH —constraint=pascal" (an em dash, which sbatch refuses as an invalid directive), removed; 72 h scaled to the cpu partition's MaxTime, 24 h
#SBATCH -A @ACCOUNT@
#SBATCH --time=24:00:00
#SBATCH --output=@SUBDIR@/slurm-%j.out
#SBATCH --nodes=1
#SBATCH --partition=cpu

echo ${1}
eval ${1}
