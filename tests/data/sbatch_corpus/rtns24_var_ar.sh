#!/bin/bash
# source: github aarontwillcock/RTNS24-AVR-FPTAS src/HPC-SBATCH-var_ar-sln_qual.sh (Wayne State)
# adapted: -A added; qos primary -> normal; 128G scaled to 3G; -w mdt[1-83] -> c1
# Job name
#SBATCH --job-name k_v_ar_sln
#SBATCH -A @ACCOUNT@
# Submit to the primary QoS
#SBATCH -q normal
# Request one node
#SBATCH -N 1
# Total number of cores, in this example it will 1 node with 1 core each. 
#SBATCH -n 1
# Request memory
#SBATCH --mem=3G
# Mail when the job begins, ends, fails, requeues 
#SBATCH --mail-type=ALL
# Where to send email alerts
#SBATCH --mail-user=ez9213@wayne.edu
# Create an output file that will be output_<jobid>.out 
#SBATCH -o output_%j.out
# Create an error file that will be error_<jobid>.out
#SBATCH -e errors_%j.err
# Set maximum time limit 
#SBATCH -t 1-0:0:0
# Set pref to MDT cluster
#SBATCH -w c1

python3 var_ar-sln_qual.py
