# the values for production
n = 5
