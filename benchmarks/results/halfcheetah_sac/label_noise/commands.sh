# The offline measure of a fallible teacher on HalfCheetah (#63), run on 2026-12-01 beside two SAC runs.
# Policies: the agents kept at 25k, 50k and 75k agent steps by the standardised-reward control run of seed 0
# (python benchmarks/learning_curves.py --example halfcheetah_sac --arm true_reward --standardised-reward
#  --keep-agents --seed 0, commit 9044ec7), recorded with reward_signal.py at commit 2f6b429:
python benchmarks/reward_signal.py record AGENTS --example halfcheetah_sac --steps 4000 --seed 200 --out labels
python benchmarks/reward_signal.py record AGENTS --example halfcheetah_sac --steps 2000 --seed 100 --out eval
# Labels, training (3,000 steps each, one thread) and scores (label_noise.log, its INFO lines left out), at 2f6b429;
# the label-flip-0.05, label-flip-0.2 and all variants trained on 2026-12-02 at eac4e13, and every variant scored
# again then, the earlier trainings reused (--out keeps them):
python benchmarks/label_noise.py --labels-from labels --eval eval --out ln_hc --teachers 0:200 0.1:200 0.3:700 \
    --seeds 0 1 2 --steps 3000
# early_policy.log (2026-12-02, at 3219287, beside two SAC runs): labels drawn from the 25k agent's recording alone
# (near a random policy: what a run's first labels compare), scored on the same eval recordings of all three agents.
# Does a network learn HalfCheetah's reward from a run's first few labels?
mkdir -p labels_early && ln -s ../labels/agent_25000.npz labels_early/
python -m benchmarks.experiments.label_noise --labels-from labels_early --eval eval --out ln_hc_early \
    --teachers 0:40 0.1:40 0:100 0.1:100 0.1:200 --seeds 0 1 2 --variants defaults
