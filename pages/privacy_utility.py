import streamlit as st

st.title("privacy_utility")
st.info("This page is being built.")
