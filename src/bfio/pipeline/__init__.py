"""What reads the studies' registry, the theory checks or the figures: the config
and its README, the notebook's explorer, the kernel warm-up and the plateau.
"""
