print("devserver placeholder")
