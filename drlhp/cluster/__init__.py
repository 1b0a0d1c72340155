"""drlhp past one machine, on Ray: many env runners feeding one preference service.

::

  driver (your script): PreferenceService handle, RLlib Algorithm (learner)
       | starts (on its own node by default)        ^ check(): the service's failures
       v                                            | raised here as drlhp's errors
  preference service (a Ray actor, service.py)
    = drlhp's PreferencePipeline: preference-interface process (pairs, labeller:
      synthetic | window + terminal | web page; label journal) and reward-trainer
      process (database, checkpoints in log_dir), both on the service's node
       ^ add_clips(): compressed clips,             | weights_after(): each new ready
       | at most clips_per_second in all            | checkpoint, put in the object store once
       |                                            v
  env runners (RLlib EnvRunners, any node), their envs wrapped in drlhp's front-ends
  linked to the service (runner_env.py, runner_pipeline.py): cut clips, keep the
  runner's share of the rate (clip_stream.py), send in batches without waiting;
  predicted rewards, one batch per step, from the newest weights once they have arrived

``drlhp.cluster.rllib.with_preferences`` plugs this into an RLlib ``AlgorithmConfig``.
Needs ``pip install "drlhp[ray]"``.
"""
from drlhp.cluster.clip_stream import PackedClip, RateCap
from drlhp.cluster.runner_env import ClusterPreferenceVectorWrapper, ClusterPreferenceWrapper
from drlhp.cluster.runner_pipeline import RunnerPipeline
from drlhp.cluster.service import NAMESPACE, PreferenceService, PreferenceServiceDied

__all__ = ["ClusterPreferenceVectorWrapper", "ClusterPreferenceWrapper", "NAMESPACE", "PackedClip", "PreferenceService",
           "PreferenceServiceDied", "RateCap", "RunnerPipeline"]
