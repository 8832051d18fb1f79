"""Chapter 19's coursework: The arithmetic of a real run (``book/19_real_runs.ipynb``)."""

NUMBER = 19
PART, LECTURE = 5, 2
OBJECTIVE = ("add up a run's memory per GPU (16 bytes a parameter, ZeRO's stages, logits, KV cache) and its time"
             " (sampling, training, weight sync; synchronous against asynchronous); read a run's logged metrics "
             "(a loss of 0 with a gradient, flat groups, a learning rate too high)")
MINUTES = (80, 120)     # reading its text and code, doing its exercises

#: What a student can do after each exercise (by label).
EXERCISE_OBJECTIVES = {
    "ex-ch19-bytes": "add up the bytes of weights, gradients, optimizer state and reference for a 3B run",
    "ex-ch19-zero2": "compute what ZeRO-2 leaves on each of 8 GPUs",
    "ex-ch19-kv": "compute the KV cache of a sampling step from a model's shape",
    "ex-ch19-decode": "say whether one decoding step is bound by memory bandwidth or by FLOPs, and its time",
    "ex-ch19-write-kv-bytes": "implement the KV cache's bytes per token from a model's shape",
    "ex-ch19-split": "find the split of GPUs between sampler and trainer that minimises a step, and whether it "
                     "moves",
    "ex-ch19-loss-at-start": "compute the loss TRL's default dapo reports at a run's first step, and why it is "
                             "not 0",
    "ex-ch19-gradient-at-start": "compute the gradient at a run's first step, where the loss is 0 and the policy"
                                 " moves",
    "ex-ch19-lora-bytes": "count LoRA's trainable parameters from a model's shape, and the bytes they and their "
                          "AdamW state take",
    "ex-ch19-entropy-floor": "compute the mean token entropy below which at least half the groups are flat, from "
                             "G and the completion length",
    "ex-ch19-clipped": "compute the share of capped completions above which most decoding batches run to the "
                       "cap",
    "ex-ch19-vllm-share": "choose a colocated run's vllm_gpu_memory_utilization from its weights, working memory "
                          "and KV cache",
    "ex-ch19-sync": "compute the seconds a split run's weight sync adds over a colocated gather, and say what "
                    "the split buys and pays for them",
    "ex-ch19-flat-share": "compute the share of flat groups a sparse reward leaves, and tell its log from a "
                          "reward that never fires",
    "ex-ch19-read-a-run": "predict, then read from the logged metrics, how a learning rate between the two runs "
                          "fails",
}
#: The kind of each exercise whose title names none.
UNTITLED_KINDS = {}
