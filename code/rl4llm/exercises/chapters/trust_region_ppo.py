"""Chapter 11's coursework: How near is near: trust regions and PPO's clip (``book/11_trust_region_ppo.ipynb``)."""

NUMBER = 11
PART, LECTURE = 3, 1
OBJECTIVE = ("measure an update by KL; evaluate PPO's clipped objective and its gradient for both signs of the "
             "advantage; read clip fractions over inner steps")
MINUTES = (50, 60)      # reading its text and code, doing its exercises

#: What a student can do after each exercise (by label).
EXERCISE_OBJECTIVES = {
    "ex-ch11-negative": "evaluate the clipped objective by hand for a negative advantage",
    "ex-ch11-write-clipped-objective": "implement PPO's clipped surrogate, with an asymmetric band",
    "ex-ch11-cliphigher": "say which clip cases an asymmetric band changes, and why DAPO uses one",
    "ex-ch11-first-step": "show that the first inner step of PPO is the REINFORCE step",
    "ex-ch11-early-stop": "find where a KL early-stopping rule would end the inner loop, and what it saves",
    "ex-ch11-long-reuse": "predict what many inner steps on one group do once the clip binds",
}
#: The kind of each exercise whose title names none.
UNTITLED_KINDS = {"ex-ch11-cliphigher": "written", "ex-ch11-first-step": "written",
                  "ex-ch11-early-stop": "experiment"}
