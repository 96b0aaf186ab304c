#!/bin/sh
echo triage
