import streamlit as st

st.title("training")
st.info("This page is being built.")
