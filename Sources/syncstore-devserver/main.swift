import Hummingbird
import HummingbirdTLS
import ArgumentParser
import CSQLite
import CJansson
print("devserver placeholder")
