#!/usr/bin/env bash
# source: github lbl-neutrino/calibizer_job calibizer_job_nompi.sh (NERSC Perlmutter)
# adapted: account dune -> @ACCOUNT@, qos regular -> normal; 256 tasks scaled to 4; -C cpu and -L cfs removed (this
#   cluster has no such feature or license)
#SBATCH -N 1 --ntasks-per-node=4
#SBATCH -t 06:00:00 -A @ACCOUNT@ -q normal

infile=$1; shift
source load_nompi.sh
srun -o "$logdir"/task-%j.%t.out ./module3_worker.py --randsleep 60 --singleshot -c module3_nompi "$infile" "$@"
