"""Inputs that more than one test module builds: documents written by the real writers, hand-made PDFs,
images, and stand-ins for the AWS clients' sleeps. Each builder returns fresh bytes or objects per call."""
