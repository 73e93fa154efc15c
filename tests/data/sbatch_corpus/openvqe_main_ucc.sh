#!/bin/bash
# source: github OpenVQE/OpenVQE openvqe/bash_files/main_ucc.sh
# adapted: -A added; partition QLM -> cpu; 6 CPUs scaled to 4
# gw-expect: refused --time
#SBATCH -A @ACCOUNT@
#SBATCH -c 4
#SBATCH -o job.%j
#SBATCH -p cpu
#SBATCH --time=infinite
#SBATCH -o slurm-%j.out
time python3 ../mains/main_ucc.py
